package adminv1

import _ "embed"

// OpenAPI is the OpenAPI 2.0 document of the REST/JSON admin API, generated
// from the .proto files by protoc-gen-openapiv2 (make proto).
//
//go:embed openapi.swagger.json
var OpenAPI []byte
