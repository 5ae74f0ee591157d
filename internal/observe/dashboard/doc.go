// Package dashboard serves the web dashboard every node offers at
// http://HOST:52415/: the page and its assets, built from web/ and embedded
// here (dist/), and the live stream behind it, GET /v1/dashboard/events,
// whose Broker fans the node's frames out to every open page. Frames reads
// those from the node's Sources: plain closures and values, since this
// package imports nothing of ours but platform packages.
//
// The assets are committed, so `go build` alone gives a binary that serves
// the dashboard; `cd web && npm ci && npm run build` rebuilds them.
package dashboard
