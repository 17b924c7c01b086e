package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTargetID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 80)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "already an ID", in: "prod-us-east-1", want: "prod-us-east-1"},
		{name: "upper case and underscores", in: "Prod_US_East.1", want: "prod-us-east-1"},
		{name: "runs collapse and ends trim", in: "--a//b--", want: "a-b"},
		{name: "URL", in: "https://10.0.0.1:6443", want: "https-10-0-0-1-6443"},
		{name: "nothing left", in: "___", want: "t-" + shortNameHash("___")},
		{name: "empty", in: "", want: "t-" + shortNameHash("")},
		{name: "too long", in: long, want: strings.Repeat("a", 54) + "-" + shortNameHash(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := TargetID(tt.in)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, len(got), maxTargetIDLength)
			require.Equal(t, got, TargetID(got), "an ID maps to itself")
		})
	}
}

func TestParseAllowedTeams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   string
		present bool
		want    TeamSet
	}{
		{name: "absent means no scoping", value: "", present: false, want: nil},
		{name: "empty allows nothing", value: " , ", present: true, want: TeamSet{}},
		{name: "list with blanks", value: "payments, search ,,", present: true,
			want: TeamSet{"payments": {}, "search": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ParseAllowedTeams(tt.value, tt.present))
		})
	}
}

func TestTeamSet_Sorted(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"a", "b", "c"}, TeamSet{"c": {}, "a": {}, "b": {}}.Sorted())
}
