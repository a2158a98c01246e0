// Package extprocfiltertest is test support for the ext_proc filter of
// edge/extprocfilter: [Do] runs one whole HTTP request (headers, body,
// trailers, a fake upstream's answer) through a filter Client, and [Direct]
// and [DirectOwned] run a processor written as a Process loop in-process on a
// channel pipe, an in-memory stand-in for a gRPC connection (wrap it with
// extprocfilter.GRPC).
//
// It is imported only from _test.go files and tools, never by production
// code. It may import edge/extprocfilter, the Envoy protos, gRPC and
// protobuf.
package extprocfiltertest
