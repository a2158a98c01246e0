// Package bedrock holds the wire types of the Amazon Bedrock runtime API the
// gateway speaks: Converse and ConverseStream (POST /model/{modelId}/converse
// and /converse-stream), the bodies of InvokeModel for Titan and Cohere
// embeddings, Bedrock's error body, and the event stream of ConverseStream —
// framed as AWS event streams (application/vnd.amazon.eventstream) and
// decoded with the SDK's own decoder
// (github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream), never by hand.
//
// It owns types and that decoder only: no translation and no I/O. It
// imports the standard library and the SDK's eventstream package.
package bedrock
