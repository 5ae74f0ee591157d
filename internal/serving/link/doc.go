// Package link carries a split model's pipeline links between ranks: the
// runner's end (ConnLink, the framed byte stream that implements
// pipeline.Link; DialEdge and AwaitEdge on the node's edge socket) and the
// node's (Edges: the edge socket, and the Relay that joins each link's two
// ends on this node or over a QUIC stream to the receiving rank's node).
// The relay meters every link it sends on (relaymeter.go); the node
// gossips the reports as the "edges" reading, which the cluster
// diagnostics and the master's group-connect duty read (edgestats.go).
//
// pipeline owns the Link interface and the stages; this package imports
// it, never the other way round.
package link
