package bustest

import (
	"errors"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// SlowConsumers counts the times the client nc drops messages of a
// subscription whose reader fell behind ("slow consumer"). It replaces
// nc's error handler.
func SlowConsumers(nc *nats.Conn) *atomic.Int32 {
	var n atomic.Int32
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			n.Add(1)
		}
	})
	return &n
}
