// Package testkit holds test-only infrastructure shared across packages, and
// the tests that enforce the repository's dependency rules (DESIGN.md,
// "Package layout"). Only _test.go files may import it.
package testkit
