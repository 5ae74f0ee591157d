package catalog

import (
	"fmt"
	"sort"
)

// Source supplies cards. Sources are listed in precedence order: a card
// from an earlier source overrides one with the same id from a later source.
// A source may return usable cards together with an error describing the
// ones it had to skip.
type Source interface {
	Cards() ([]Card, error)
}

// Catalog is a merged, read-only view of its sources at one moment.
type Catalog struct {
	cards map[string]Card
}

// Build merges sources (highest precedence first) into a catalog. Errors a
// source reports are returned; cards that fail validation are skipped with
// an error.
func Build(sources ...Source) (*Catalog, []error) {
	c := &Catalog{cards: map[string]Card{}}
	var errs []error
	for _, s := range sources {
		cards, err := s.Cards()
		if err != nil {
			errs = append(errs, err)
		}
		for _, card := range cards {
			if err := card.Validate(); err != nil {
				errs = append(errs, err)
				continue
			}
			if _, seen := c.cards[card.ID]; !seen {
				c.cards[card.ID] = card
			}
		}
	}
	return c, errs
}

// Behind returns a catalog with c's cards and, under the ids c does not
// have, the cards of sources (validated as Build does); c is unchanged.
func (c *Catalog) Behind(sources ...Source) (*Catalog, []error) {
	more, errs := Build(sources...)
	out := &Catalog{cards: make(map[string]Card, len(c.cards)+len(more.cards))}
	for id, card := range more.cards {
		out.cards[id] = card
	}
	for id, card := range c.cards {
		out.cards[id] = card
	}
	return out, errs
}

// Get returns the card of a model id.
func (c *Catalog) Get(id string) (Card, bool) {
	card, ok := c.cards[id]
	return card, ok
}

// List returns every card, sorted by id.
func (c *Catalog) List() []Card {
	out := make([]Card, 0, len(c.cards))
	for _, card := range c.cards {
		out = append(out, card)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Builtin is the source of the built-in demo card.
type Builtin struct{}

// Cards returns the demo card.
func (Builtin) Cards() ([]Card, error) {
	c, err := BuiltinCard()
	if err != nil {
		return nil, fmt.Errorf("built-in card: %w", err)
	}
	return []Card{c}, nil
}
