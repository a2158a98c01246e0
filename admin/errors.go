package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tollgate-ai/tollgate/store"
)

// Errors of the admin layer. They are mapped to gRPC codes at the edge (toStatus).
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: an object with that id already exists.
	ErrExists = errors.New("already exists")
	// ErrInvalid: the request or document is invalid.
	ErrInvalid = errors.New("invalid")
	// ErrDenied: the credential's role may not do this.
	ErrDenied = errors.New("permission denied")
	// ErrBusy: the object kept changing while it was being updated.
	ErrBusy = errors.New("object changed concurrently, retry")
	// ErrNoSealer: a provider credential was given but no master key is configured.
	ErrNoSealer = errors.New("no master key configured: cannot store provider credentials")
)

// toStatus maps an error to a gRPC status. Internal errors are logged and shown
// to the caller without details.
func (s *Server) toStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var code codes.Code
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, store.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, ErrExists):
		code = codes.AlreadyExists
	case errors.Is(err, ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, ErrDenied):
		code = codes.PermissionDenied
	case errors.Is(err, ErrBusy), errors.Is(err, store.ErrConflict):
		code = codes.Aborted
	case errors.Is(err, ErrNoSealer):
		code = codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	default:
		s.log.ErrorContext(ctx, "admin: internal error", slog.Any("error", err))
		return status.Error(codes.Internal, "internal error (see the server log)")
	}
	return status.Error(code, err.Error())
}

// errorf wraps a sentinel with a message: errorf(ErrInvalid, "x %q", v).
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

func isNotFound(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, store.ErrNotFound)
}
