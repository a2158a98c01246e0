package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// call is one operation (opAdmit, opSettle) waiting for a batch.
type call struct {
	kind int
	keys []string
	args []any
	done chan callResult
}

type callResult struct {
	val any
	err error
}

// pipeliner runs the operations of concurrent callers in batches: each of a
// few goroutines takes what is queued (up to max operations, without waiting)
// and sends it as one EVALSHA of batchLua, so Redis runs many operations per
// script call and per system call. A lone caller pays no extra delay.
type pipeliner struct {
	rdb     goredis.UniversalClient
	queue   chan *call
	max     int
	stop    chan struct{}
	wg      sync.WaitGroup
	timeout time.Duration
}

func newPipeliner(rdb goredis.UniversalClient, workers, maxBatch int, timeout time.Duration) *pipeliner {
	p := &pipeliner{
		rdb: rdb, queue: make(chan *call, 4*maxBatch*workers), max: maxBatch,
		stop: make(chan struct{}), timeout: timeout,
	}
	for range workers {
		p.wg.Go(p.run)
	}
	return p
}

func (p *pipeliner) close() {
	close(p.stop)
	p.wg.Wait()
}

// do runs one operation in a batch and waits for its reply.
func (p *pipeliner) do(ctx context.Context, kind int, keys []string, args []any) (any, error) {
	c := &call{kind: kind, keys: keys, args: args, done: make(chan callResult, 1)}
	select {
	case p.queue <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.stop:
		return nil, errClosed
	}
	select {
	case r := <-c.done:
		return r.val, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeliner) run() {
	batch := make([]*call, 0, p.max)
	for {
		var first *call
		select {
		case first = <-p.queue:
		case <-p.stop:
			return
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < p.max {
			select {
			case c := <-p.queue:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		p.exec(batch)
	}
}

func (p *pipeliner) exec(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	nk, na := 0, 1
	for _, c := range batch {
		nk += len(c.keys)
		na += 3 + len(c.args)
	}
	keys := make([]string, 0, nk)
	args := make([]any, 0, na)
	args = append(args, len(batch))
	for _, c := range batch {
		keys = append(keys, c.keys...)
		args = append(args, c.kind, len(c.keys), len(c.args))
		args = append(args, c.args...)
	}
	v, err := batchLua.Run(ctx, p.rdb, keys, args...).Result()
	var replies []any
	if err == nil {
		var ok bool
		if replies, ok = v.([]any); !ok || len(replies) != len(batch) {
			err = fmt.Errorf("redis: batch: unexpected reply %v", v)
		}
	}
	for i, c := range batch {
		if err != nil {
			c.done <- callResult{nil, err}
			continue
		}
		c.done <- callResult{replies[i], nil}
	}
}
