package master

import (
	"cmp"
	"slices"
)

func sortIDs[T cmp.Ordered](s []T) { slices.Sort(s) }
