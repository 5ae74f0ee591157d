// Package supervise starts and stops child processes: our own binary
// re-executed with a hidden subcommand (or any program), in a process group of
// its own, with its stdin and stdout handed to the caller as pipes and its
// stderr logged line by line (a child's slog JSON records keep their level
// and attributes). Kill signals the whole group, so a grandchild
// (an engine's helper process) cannot outlive its runner. Breaker is the
// crash circuit breaker: a pure value that says when a child has failed too
// often to be started again.
//
// A Process is safe for concurrent use. Each Process owns one goroutine that
// reaps the child and one that reads its stderr; both have ended once Done is
// closed. A Breaker is a plain value owned by its caller.
//
// Process groups and signals are Unix features; on other systems Start
// returns ErrUnsupported. The package imports only the standard library.
package supervise
