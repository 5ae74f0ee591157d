// Package tensorfetch moves a pipeline stage's share of a model between
// cluster members: a member that has the model installed serves byte ranges
// of its GGUF file (the header and whole tensors only) over the
// authenticated QUIC transport (ALPN skulk/tensors/1), and a node that
// lacks the model fetches exactly the header and the tensors of its layer
// range, verifies each against the installing node's per-tensor SHA-256
// sums, and writes them at their offsets in a sparse file of the original
// size, so the runner maps it unchanged and touches only its tensors.
//
// Such a file is a partial copy, kept apart from the store's installed
// artifacts (it is never listed as installed); a later stage that needs the
// same tensors reuses it, and one that needs others fetches what is missing.
package tensorfetch
