package cache

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PGConn is what PGVector needs of a PostgreSQL connection: a *pgx.Conn or a
// *pgxpool.Pool.
type PGConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PGVector is the semantic index replicas share: one row a cached prompt in
// PostgreSQL with the pgvector extension (Debian: postgresql-15-pgvector),
// compared by cosine distance (<=>). Vectors of any dimension share the
// table; a lookup compares only those of its own.
type PGVector struct {
	db    PGConn
	table string
	now   func() time.Time
}

var _ Index = (*PGVector)(nil)

// DefaultPGTable is the table PGVector keeps its vectors in.
const DefaultPGTable = "tollgate_cache_vectors"

// NewPGVector returns the index over db (table "" is DefaultPGTable; a
// plain identifier); Migrate creates what it needs.
func NewPGVector(db PGConn, table string, now func() time.Time) *PGVector {
	if table == "" {
		table = DefaultPGTable
	}
	if now == nil {
		now = time.Now
	}
	return &PGVector{db: db, table: pgx.Identifier{table}.Sanitize(), now: now}
}

// Migrate creates the vector extension (when the role may: else a database
// owner must run CREATE EXTENSION vector once) and the table.
func (p *PGVector) Migrate(ctx context.Context) error {
	if _, err := p.db.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		return errors.Join(errors.New("cache: the pgvector extension is missing (CREATE EXTENSION vector)"), err)
	}
	_, err := p.db.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+p.table+` (
		ns text NOT NULL,
		key text NOT NULL,
		embedding vector NOT NULL,
		expires_at timestamptz NOT NULL,
		PRIMARY KEY (ns, key))`)
	return err
}

// vectorLiteral is vec in pgvector's text form, "[1,2.5,3]".
func vectorLiteral(vec []float32) string {
	b := make([]byte, 0, len(vec)*10+2)
	b = append(b, '[')
	for i, x := range vec {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return string(append(b, ']'))
}

// Nearest returns the live row of ns nearest to vec by cosine distance.
func (p *PGVector) Nearest(ctx context.Context, ns string, vec []float32, threshold float64) (string, float64, bool, error) {
	var key string
	var score float64
	err := p.db.QueryRow(ctx, `SELECT key, 1 - (embedding <=> $2::vector) FROM `+p.table+`
		WHERE ns = $1 AND expires_at > $3 AND vector_dims(embedding) = $4
		ORDER BY embedding <=> $2::vector LIMIT 1`,
		ns, vectorLiteral(vec), p.now(), len(vec)).Scan(&key, &score)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	if score < threshold {
		return "", 0, false, nil
	}
	return key, score, true, nil
}

// Add upserts the row of (ns, key) and drops the namespace's expired rows.
func (p *PGVector) Add(ctx context.Context, ns string, vec []float32, key string, expires time.Time) error {
	if _, err := p.db.Exec(ctx, `INSERT INTO `+p.table+` (ns, key, embedding, expires_at)
		VALUES ($1, $2, $3::vector, $4)
		ON CONFLICT (ns, key) DO UPDATE SET embedding = EXCLUDED.embedding, expires_at = EXCLUDED.expires_at`,
		ns, key, vectorLiteral(vec), expires); err != nil {
		return err
	}
	_, err := p.db.Exec(ctx, `DELETE FROM `+p.table+` WHERE ns = $1 AND expires_at <= $2`, ns, p.now())
	return err
}
