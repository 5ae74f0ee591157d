package runner

import (
	"fmt"

	"github.com/skulk/skulk/internal/engine/model"
)

// slotTokens is the least cache a slot takes: a sequence's cache starts at
// 256 positions (model.NewCache) and a prompt chunk is as long.
const slotTokens = DefaultPrefillChunk

// kvBytesPerToken is the fp16 key and value cache of one token over every
// block, as placement charges it (values at their own width: latent
// attention's are narrower than its keys).
func kvBytesPerToken(c model.Config) int64 {
	return 2 * int64(c.KVDim()+c.VDim()) * int64(c.NLayer)
}

// slotsFor is the number of slots a runner serves with: the slots asked
// for (explicit: --slots or SKULK_SLOTS), or DefaultSlots as far as the
// window holds them.
func slotsFor(slots int, explicit bool, context int, kvPerToken int64) (int, error) {
	if !explicit {
		return max(1, min(DefaultSlots, context/slotTokens)), nil
	}
	return slots, checkSlots(slots, context, kvPerToken)
}

// checkSlots refuses more slots than the KV memory placement admitted
// (context tokens of KV, shared by the slots) can give slotTokens each;
// one slot always fits.
func checkSlots(slots, context int, kvPerToken int64) error {
	if slots < 1 {
		return fmt.Errorf("runner: load: %d slots; at least 1", slots)
	}
	need := int64(slots) * slotTokens
	if slots == 1 || need <= int64(context) {
		return nil
	}
	return fmt.Errorf("runner: load: %d slots need at least %d × %d = %d tokens of KV cache (%d bytes at %d bytes a token), "+
		"but the placement admitted %d tokens (%d bytes); use at most %d slots (SKULK_SLOTS) or place with a larger context_tokens",
		slots, slots, slotTokens, need, need*kvPerToken, kvPerToken, context, int64(context)*kvPerToken, max(context/slotTokens, 1))
}

// prefixBytes is the prefix cache's bound: mb MiB, or with AutoPrefixCache
// the KV memory placement admitted for the window (context tokens), which
// a runner's live sequences share too.
func prefixBytes(mb, context int, kvPerToken int64) int64 {
	if mb == AutoPrefixCache {
		return int64(context) * kvPerToken
	}
	return int64(mb) << 20
}
