// Package modelpattern matches model names against the glob patterns a model
// group's aliases and a key's model allow-list may hold ("claude-*", "gpt-5*",
// "gemini-*"): '*' stands for any run of characters, every other character
// for itself. It decides which of several matching patterns is the most
// specific, and whether two patterns could ever match one name with equal
// specificity (a configuration the admin API refuses).
//
// Imports: stdlib only.
package modelpattern
