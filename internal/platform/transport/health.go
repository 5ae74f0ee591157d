package transport

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Health pings are QUIC datagrams, so they never interfere with the streams
// a plane's handler accepts: 1 type byte and an 8-byte sequence number.
const (
	dgPing  = 1
	dgPong  = 2
	dgBytes = 9
)

// serveDatagrams answers pings and forwards pongs to the monitor until the
// connection closes.
func (c *Conn) serveDatagrams() {
	ctx := c.qc.Context()
	for {
		b, err := c.qc.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		if len(b) != dgBytes {
			continue
		}
		switch b[0] {
		case dgPing:
			b[0] = dgPong
			_ = c.qc.SendDatagram(b) // a lost pong is a missed ping
		case dgPong:
			select {
			case c.pongs <- binary.BigEndian.Uint64(b[1:]):
			default:
			}
		}
	}
}

// monitor pings the peer every PingInterval; a ping without a pong within
// PingBudget is a failure, and PingFailures consecutive failures close the
// connection with ErrUnhealthy.
func (e *Endpoint) monitor(c *Conn) {
	interval, budget, maxFail := e.cfg.PingInterval, e.cfg.PingBudget, e.cfg.PingFailures
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var seq uint64
	failures := 0
	for {
		select {
		case <-c.Done():
			return
		case <-timer.C:
		}
		seq++
		if c.ping(seq, budget) {
			c.answered.Add(1)
			failures = 0
			timer.Reset(interval)
			continue
		}
		failures++
		if failures >= maxFail {
			e.log.Warn("transport: closing unhealthy connection", "node", string(c.peer), "alpn", c.alpn,
				"peer_addr", c.RemoteAddr().String(), "failed_pings", failures, "budget", budget)
			c.closeWith(ErrUnhealthy, CodeUnhealthy, fmt.Sprintf("%d consecutive pings failed", failures))
			return
		}
		timer.Reset(0) // the budget already spent the interval: retry at once
	}
}

// ping sends one ping and waits up to budget for its pong.
func (c *Conn) ping(seq uint64, budget time.Duration) bool {
	var b [dgBytes]byte
	b[0] = dgPing
	binary.BigEndian.PutUint64(b[1:], seq)
	t := time.NewTimer(budget)
	defer t.Stop()
	if err := c.qc.SendDatagram(b[:]); err != nil {
		select { // count the failure after the budget, as for a lost ping
		case <-t.C:
		case <-c.Done():
		}
		return false
	}
	for {
		select {
		case got := <-c.pongs:
			if got == seq {
				return true
			}
		case <-t.C:
			return false
		case <-c.Done():
			return false
		}
	}
}
