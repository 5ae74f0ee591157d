package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want Info
	}{
		{"none", nil, Info{Base, "unknown"}},
		{"devel_no_vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Info{Base, "unknown"}},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "863cadb0123456789abcdef0123456789abcdef0"}, {Key: "vcs.modified", Value: "false"}}},
			Info{Base, "863cadb01234"}},
		{"dirty", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "863cadb0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Base, "863cadb01234+dirty"}},
		{"tagged", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, Info{"v0.2.0", "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuildInfo(tt.bi); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
