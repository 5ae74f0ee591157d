// Package ids provides the identifier vocabulary of the control plane: the
// string identities of nodes, instances, commands, runners, tasks and models,
// and the numeric log positions Index and Term.
//
// Every string identity is its own type so that a TaskID cannot be passed
// where an InstanceID is expected. Parse functions and Validate methods bound
// the length and restrict the charset, because identities travel on the wire,
// land in file names and log lines, and are echoed to operators.
//
// The package imports only the standard library and holds no mutable state;
// every value is safe to share between goroutines. Anyone may import it.
package ids
