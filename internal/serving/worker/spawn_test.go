package worker

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/platform/config"
)

// TestRunnerFlags: a runner child gets the node's log level and its
// kernel cap as flags, since it reads no environment.
func TestRunnerFlags(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		eng   config.Engine
		want  []string
	}{
		{name: "defaults", level: slog.LevelInfo, want: []string{"-log-level", "INFO"}},
		{name: "generic_kernels", level: slog.LevelDebug, eng: config.Engine{Kernels: config.KernelsGeneric},
			want: []string{"-log-level", "DEBUG", "-kernels", "generic"}},
		{name: "unpacked", level: slog.LevelInfo, eng: config.Engine{NoPack: true},
			want: []string{"-log-level", "INFO", "-no-pack"}},
		{name: "serving", level: slog.LevelInfo, eng: config.Engine{Slots: 16, PrefixCacheMB: new(0)},
			want: []string{"-log-level", "INFO", "-slots", "16", "-prefix-cache-mb", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runnerFlags(tt.level, tt.eng); !slices.Equal(got, tt.want) {
				t.Fatalf("flags %q, want %q", got, tt.want)
			}
		})
	}
}
