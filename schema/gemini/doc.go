// Package gemini holds the wire types of Google's Gemini API
// (generativelanguage.googleapis.com v1 and v1beta, and the same bodies on
// Vertex AI's publishers/google/models/{m}:…): generateContent and
// streamGenerateContent, countTokens, embedContent and batchEmbedContents,
// Imagen's :predict (imagen.go),
// models.list, and Google's error shape. Field names are the API's JSON
// names (lowerCamelCase); optional scalars are pointers so that "absent" and
// "zero" stay apart when a body is written back.
//
// It owns types only: no translation and no I/O. It imports the standard
// library only.
package gemini
