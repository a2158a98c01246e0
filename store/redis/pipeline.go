package redis

import (
	"context"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// call is one script invocation waiting for a pipeline.
type call struct {
	script *goredis.Script
	keys   []string
	args   []any
	done   chan callResult
}

type callResult struct {
	val any
	err error
}

// pipeliner runs the script calls of concurrent callers in pipelines: each of
// a few goroutines takes what is queued (up to max calls, without waiting) and
// sends it as one pipeline of EVALSHAs, so Redis reads and answers many calls
// per system call. A lone caller pays no extra delay.
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

// do runs script through the pipeline and waits for its reply.
func (p *pipeliner) do(ctx context.Context, script *goredis.Script, keys []string, args ...any) (any, error) {
	c := &call{script: script, keys: keys, args: args, done: make(chan callResult, 1)}
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
	if len(batch) == 1 {
		c := batch[0]
		v, err := c.script.Run(ctx, p.rdb, c.keys, c.args...).Result()
		c.done <- callResult{v, err}
		return
	}
	cmds, _ := p.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, c := range batch {
			pipe.EvalSha(ctx, c.script.Hash(), c.keys, c.args...)
		}
		return nil
	})
	for i, c := range batch {
		v, err := cmds[i].(*goredis.Cmd).Result()
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			v, err = c.script.Run(ctx, p.rdb, c.keys, c.args...).Result() // loads the script
		}
		c.done <- callResult{v, err}
	}
}
