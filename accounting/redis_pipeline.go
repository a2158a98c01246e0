package accounting

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// call is one operation waiting for a batch.
type call struct {
	op   *op
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
	leases  string // the lease zset, KEYS[1] of every batch
	queue   chan *call
	max     int
	stop    chan struct{}
	wg      sync.WaitGroup
	timeout time.Duration
}

func newPipeliner(rdb goredis.UniversalClient, leases string, workers, maxBatch int, timeout time.Duration) *pipeliner {
	p := &pipeliner{
		rdb: rdb, leases: leases, queue: make(chan *call, 4*maxBatch*workers), max: maxBatch,
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
func (p *pipeliner) do(ctx context.Context, o *op) (any, error) {
	o.done()
	c := &call{op: o, done: make(chan callResult, 1)}
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
	nk, na := 1, 1
	for _, c := range batch {
		nk += len(c.op.keys)
		na += 1 + len(c.op.strs)
	}
	keys := make([]string, 0, nk)
	keys = append(keys, p.leases)
	args := make([]any, 0, na)
	args = append(args, len(batch))
	for _, c := range batch {
		keys = append(keys, c.op.keys...)
		args = append(args, c.op.nums)
		for _, s := range c.op.strs {
			args = append(args, s)
		}
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
