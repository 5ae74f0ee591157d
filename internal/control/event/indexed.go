package event

import (
	"fmt"

	"github.com/skulk/skulk/internal/platform/ids"
)

// IndexedEvent is an Event at its position in the master's log.
type IndexedEvent struct {
	Term  ids.Term
	Index ids.Index
	Event Event
}

// Validate checks the position and the event.
func (ie IndexedEvent) Validate() error {
	if ie.Index == 0 {
		return &InvalidError{Kind: kindOf(ie.Event), Field: "index", Err: fmt.Errorf("index 0 precedes the first event")}
	}
	if ie.Term == 0 {
		return &InvalidError{Kind: kindOf(ie.Event), Field: "term", Err: fmt.Errorf("term 0 precedes the first election")}
	}
	if ie.Event == nil {
		return &InvalidError{Field: "event", Err: fmt.Errorf("missing")}
	}
	return ie.Event.Validate()
}

func kindOf(ev Event) Kind {
	if ev == nil {
		return ""
	}
	return ev.Kind()
}
