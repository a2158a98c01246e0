// Package grpcstream holds what the filter's in-process transports share
// with its test support (extprocfiltertest.Direct): how a gRPC stream's
// status and messages look to a client. Standard library, gRPC and
// protobuf only.
package grpcstream

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// HandlerStatus is what a gRPC client receives when a server's handler
// returns err: err itself when it is a status (nil is OK), else
// codes.Unknown, as grpc-go does.
func HandlerStatus(err error) error {
	if _, ok := status.FromError(err); !ok {
		return status.Error(codes.Unknown, err.Error())
	}
	return err
}

// RecvInto is a client stream's RecvMsg over its typed Recv.
func RecvInto(recv func() (*extprocv3.ProcessingResponse, error), m any) error {
	r, err := recv()
	if err != nil {
		return err
	}
	proto.Merge(m.(*extprocv3.ProcessingResponse), r)
	return nil
}
