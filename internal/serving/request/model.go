package request

import "time"

// ModelInfo is a model that can serve requests now (it has a ready
// instance), as the wire formats' model listings show it.
type ModelInfo struct {
	ID      string // what a Request names as its Model
	OwnedBy string
	Created time.Time // when the model (or its card) was added
}
