package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// The floor: the least a Go proxy with a goroutine per connection can do,
// for the rush's comparison (bench/run.sh, RUSH_TARGETS=floor). Each
// downstream connection gets a goroutine that reads a request head and
// its Content-Length body, takes an idle upstream connection or dials one
// (net.Dialer, as every Go proxy does), writes the request through as it
// came, reads the response with the load generator's parser and writes it
// back with a head of its own. No routing, no processing, no accounting:
// what it costs is the runtime's and the kernel's share of a Go data plane.

// floorProxy is the floor's state: the upstream address and its idle
// connections.
type floorProxy struct {
	upstream string
	dialer   net.Dialer

	mu   sync.Mutex
	idle []*floorUpstream
}

// floorUpstream is one upstream connection and its response parser.
type floorUpstream struct {
	nc net.Conn
	rd *reader
}

// serveFloor serves the floor on lis until ctx ends.
func serveFloor(ctx context.Context, lis net.Listener, upstream string) error {
	p := &floorProxy{upstream: upstream, dialer: net.Dialer{Timeout: 5 * time.Second}}
	stop := context.AfterFunc(ctx, func() { _ = lis.Close() })
	defer stop()
	for {
		c, err := lis.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		go p.serve(c)
	}
}

func (p *floorProxy) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	br := bufio.NewReaderSize(c, 4<<10)
	var req []byte
	for {
		var err error
		if req, err = readRequest(br, req[:0]); err != nil {
			return
		}
		up, err := p.get()
		if err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		resp, err := up.exchange(req)
		if err != nil {
			_ = up.nc.Close()
			return
		}
		head := fmt.Appendf(req[:0], "HTTP/1.1 %d \r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
			resp.status, resp.ctype, len(resp.body))
		_, werr := (&net.Buffers{head, resp.body}).WriteTo(c)
		if resp.close {
			_ = up.nc.Close()
		} else {
			p.put(up)
		}
		if werr != nil {
			return
		}
	}
}

func (p *floorProxy) get() (*floorUpstream, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		up := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return up, nil
	}
	p.mu.Unlock()
	nc, err := p.dialer.Dial("tcp", p.upstream)
	if err != nil {
		return nil, err
	}
	return &floorUpstream{nc: nc, rd: newReader(nc)}, nil
}

func (p *floorProxy) put(up *floorUpstream) {
	p.mu.Lock()
	p.idle = append(p.idle, up)
	p.mu.Unlock()
}

func (up *floorUpstream) exchange(req []byte) (response, error) {
	if _, err := up.nc.Write(req); err != nil {
		return response{}, err
	}
	return up.rd.read()
}

// readRequest appends one request (head and Content-Length body, as
// received) to buf.
func readRequest(br *bufio.Reader, buf []byte) ([]byte, error) {
	length := 0
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return buf, err
		}
		if n == maxHeaders {
			return buf, errMalformed
		}
		buf = append(buf, line...)
		name, value, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		if !ok {
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
			continue
		}
		if bytes.EqualFold(name, []byte("content-length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil || length < 0 || length > maxBody {
				return buf, errors.Join(errMalformed, err)
			}
		}
	}
	start := len(buf)
	buf = grow(buf, start+length)
	_, err := io.ReadFull(br, buf[start:])
	return buf, err
}
