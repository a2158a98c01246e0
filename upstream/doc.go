// Package upstream names where a request goes: Target (one deployment of a
// model group: provider type, base path, credential, provider model, price)
// and the RequestSigner that adds credentials depending on the final request
// (AWS SigV4, OAuth2 tokens). It sits below translate/ (which builds requests
// for a Target) and routing/ (which chooses one), so that neither imports the
// other.
//
// Imports: kernel (Price) only.
package upstream
