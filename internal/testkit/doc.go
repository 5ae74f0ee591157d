// Package testkit holds test-only infrastructure shared across packages, and
// the tests that enforce the repository's dependency rules (see
// docs/architecture.md, "Dependency rules"). Only _test.go files may import it.
//
// Eventually waits for a condition with backoff; Clock is a fake clock for
// code that takes its time as an input; NoLeaks fails a test that leaves
// goroutines running. Timing-heavy tests whose code runs on fake time and
// in-memory channels use testing/synctest instead (see internal/serving/worker);
// code on real sockets cannot, and uses Eventually.
package testkit
