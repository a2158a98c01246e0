// Package adminv1 is the generated Go code of the Tollgate admin API
// (package tollgate.admin.v1, the .proto files beside it). Regenerate with
// `make proto` (scripts/proto.sh); never edit the *.pb.go files. It imports
// protobuf and grpc only.
package adminv1
