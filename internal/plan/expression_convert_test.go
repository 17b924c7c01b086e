package plan

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func Test_parseInt(t *testing.T) {
	t.Parallel()
	zeros := strings.Repeat("0", 100)
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr bool
	}{
		{name: "short", in: "42", want: 42},
		{name: "signed", in: "-0042", want: -42},
		{name: "plus", in: "+7", want: 7},
		{name: "long with leading zeros", in: zeros + "42", want: 42},
		{name: "long negative zero", in: "-" + zeros, want: 0},
		{name: "long largest", in: "+" + zeros + strconv.Itoa(math.MaxInt), want: math.MaxInt},
		{name: "long smallest", in: "-" + zeros + "9223372036854775808", want: math.MinInt},
		{name: "long too large", in: zeros + "9223372036854775808", wantErr: true},
		{name: "long too many digits", in: zeros + "12345678901234567890", wantErr: true},
		{name: "long not a number", in: zeros + "4x", wantErr: true},
		{name: "two signs", in: "+-" + zeros, wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "hostile", in: hostileValue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseInt(tt.in)
			want, wantErr := strconv.Atoi(tt.in)
			require.Equal(t, wantErr != nil, err != nil, "as strconv.Atoi")
			if tt.wantErr {
				require.Error(t, err)
				require.LessOrEqual(t, len(err.Error()), 2*maxMessageValue)
				require.True(t, strings.HasPrefix(err.Error(), intError), err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, want, got, "as strconv.Atoi")
		})
	}
}

func Test_parseFloat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{name: "decimal", in: "1.5"},
		{name: "exponent", in: "-1e3"},
		{name: "hexadecimal", in: "0x1p-2"},
		{name: "infinity", in: "+Infinity"},
		{name: "long decimal", in: "0." + strings.Repeat("0", 100) + "1"},
		{name: "long hexadecimal digits", in: strings.Repeat("abcdef", 10), wantErr: true},
		{name: "long with other bytes", in: strings.Repeat("1", 40) + " ", wantErr: true},
		{name: "hostile", in: hostileValue, wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseFloat(tt.in)
			want, wantErr := strconv.ParseFloat(tt.in, 64)
			require.Equal(t, wantErr != nil, err != nil, "as strconv.ParseFloat")
			if tt.wantErr {
				require.Error(t, err)
				require.LessOrEqual(t, len(err.Error()), 2*maxMessageValue)
				require.True(t, strings.HasPrefix(err.Error(), floatError), err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestConversionPatcher compares int() and float() of strings, patched, with
// expr-lang's builtins.
func TestConversionPatcher(t *testing.T) {
	t.Parallel()
	values := []string{"", "0", "-12", "+3", "1.5", "1e3", "0x10", "inf", "nan", "abc", " 1",
		strings.Repeat("0", 80) + "7", "0." + strings.Repeat("0", 80) + "1", shortHostileValue}
	for _, source := range []string{
		`int(params.x) > 2`,
		`float(params.x) > 2.5`,
		`int(name) == 0`,
		`float(params.x) != float(params.x)`,
		`int(int(params.x) > 0 ? "1" : "0") == 1`,
	} {
		fast, err := compileExpressionWith(source, true)
		require.NoError(t, err, source)
		generic, err := compileExpressionWith(source, false)
		require.NoError(t, err, source)
		var ev expressionEvaluator
		for _, v := range values {
			target := Target{ID: "t", Name: v, Params: map[string]string{"x": v}}
			want, wantErr := ev.eval(generic, &target)
			got, err := ev.eval(fast, &target)
			require.Equal(t, wantErr == nil, err == nil, "%s with %q: %v / %v", source, v, wantErr, err)
			require.Equal(t, want, got, "%s with %q", source, v)
		}
	}
}

func TestConversionPatcher_rewrites(t *testing.T) {
	t.Parallel()
	fast, err := compileExpressionWith(`int(params.x) > 2 && float(labels.y) > 1.5 && int(3.7) == 3`, true)
	require.NoError(t, err)
	disassembly := fast.program.Disassemble()
	require.Contains(t, disassembly, intFunc)
	require.Contains(t, disassembly, floatFunc)
}
