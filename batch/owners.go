package batch

import (
	"context"
	"encoding/json"
	"time"
)

// Who owns what: the provider's file and batch ids the gateway handed out,
// each mapped to the virtual key it was made for (store "batch" objects
// "file/<id>" and "owner/<id>"), so that another key cannot read, use or
// delete them, and so that a later call knows the provider to ask. They
// outlive the pending batch (a settled batch is still retrieved, its
// output file still read).

// FileRecord is a provider's file as the gateway maps it.
type FileRecord struct {
	ID       string `json:"id"` // the provider's file id
	KeyID    string `json:"key_id"`
	Provider string `json:"provider"`
	// An input file uploaded through the gateway: the deployment its lines
	// were rewritten for, the lines' URL and their worst case (admission
	// when a batch is created from it).
	Deployment string    `json:"deployment,omitempty"`
	Model      string    `json:"model,omitempty"` // public model (the group)
	Endpoint   string    `json:"endpoint,omitempty"`
	Estimate   *Estimate `json:"estimate,omitempty"`
	// BatchID is the batch whose output or error file this is.
	BatchID string `json:"batch_id,omitempty"`
	// Object is the provider's File object at upload (GET /v1/files lists
	// the key's files from these).
	Object    json.RawMessage `json:"object,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// BatchRecord is a provider's batch as the gateway maps it.
type BatchRecord struct {
	ID         string    `json:"id"`
	API        API       `json:"api"`
	KeyID      string    `json:"key_id"`
	Provider   string    `json:"provider"`
	Deployment string    `json:"deployment"`
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
}

const (
	filePrefix  = "file/"
	ownerPrefix = "owner/"
)

// AddFile records a file (once: store.ErrConflict when known).
func (s *Store) AddFile(ctx context.Context, f *FileRecord) error {
	return putDoc(ctx, s.cfg, filePrefix+f.ID, f)
}

// File returns a file record (store.ErrNotFound when unknown).
func (s *Store) File(ctx context.Context, id string) (FileRecord, error) {
	return getDoc[FileRecord](ctx, s.cfg, filePrefix+id)
}

// Files lists the files of a key, oldest id first.
func (s *Store) Files(ctx context.Context, keyID string) ([]FileRecord, error) {
	return listDocs(ctx, s.cfg, filePrefix, func(f *FileRecord) bool { return f.KeyID == keyID })
}

// RemoveFile forgets a file; forgetting one already gone is not an error.
func (s *Store) RemoveFile(ctx context.Context, id string) error {
	return removeDoc(ctx, s.cfg, filePrefix+id)
}

// AddOwner records a batch's owner (once).
func (s *Store) AddOwner(ctx context.Context, b *BatchRecord) error {
	return putDoc(ctx, s.cfg, ownerPrefix+b.ID, b)
}

// Owner returns a batch's record (store.ErrNotFound when unknown).
func (s *Store) Owner(ctx context.Context, id string) (BatchRecord, error) {
	return getDoc[BatchRecord](ctx, s.cfg, ownerPrefix+id)
}

// Owned lists the batches of a key made with api.
func (s *Store) Owned(ctx context.Context, keyID string, api API) ([]BatchRecord, error) {
	return listDocs(ctx, s.cfg, ownerPrefix, func(b *BatchRecord) bool { return b.KeyID == keyID && b.API == api })
}

// RemoveOwner forgets a batch (deleted at the provider).
func (s *Store) RemoveOwner(ctx context.Context, id string) error {
	return removeDoc(ctx, s.cfg, ownerPrefix+id)
}
