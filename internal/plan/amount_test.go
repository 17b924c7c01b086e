package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      intstr.IntOrString
		want    amount
		wantErr bool
	}{
		{name: "number", in: intstr.FromInt32(5), want: amount{value: 5}},
		{name: "zero", in: intstr.FromInt32(0), want: amount{value: 0}},
		{name: "negative", in: intstr.FromInt32(-1), wantErr: true},
		{name: "huge", in: intstr.FromInt32(1<<30 + 1), wantErr: true},
		{name: "percent", in: intstr.FromString("10%"), want: amount{value: 10, percent: true}},
		{name: "zero percent", in: intstr.FromString("0%"), want: amount{value: 0, percent: true}},
		{name: "hundred percent", in: intstr.FromString("100%"), want: amount{value: 100, percent: true}},
		{name: "over hundred percent", in: intstr.FromString("101%"), wantErr: true},
		{name: "long percent", in: intstr.FromString("000010%"), wantErr: true},
		{name: "negative percent", in: intstr.FromString("-5%"), wantErr: true},
		{name: "string without percent", in: intstr.FromString("5"), wantErr: true},
		{name: "bare percent sign", in: intstr.FromString("%"), wantErr: true},
		{name: "fraction", in: intstr.FromString("2.5%"), wantErr: true},
		{name: "unknown type", in: intstr.IntOrString{Type: 7}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseAmount(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAmountRounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		amount    amount
		total     int
		wantUp    int
		wantDown  int
		wantLabel string
	}{
		{name: "10% of 95", amount: amount{value: 10, percent: true}, total: 95, wantUp: 10, wantDown: 9, wantLabel: "10%"},
		{name: "10% of 100", amount: amount{value: 10, percent: true}, total: 100, wantUp: 10, wantDown: 10, wantLabel: "10%"},
		{name: "1% of 1", amount: amount{value: 1, percent: true}, total: 1, wantUp: 1, wantDown: 0, wantLabel: "1%"},
		{name: "33% of 10", amount: amount{value: 33, percent: true}, total: 10, wantUp: 4, wantDown: 3, wantLabel: "33%"},
		{name: "percent of nothing", amount: amount{value: 50, percent: true}, total: 0, wantUp: 0, wantDown: 0, wantLabel: "50%"},
		{name: "number ignores total", amount: amount{value: 7}, total: 3, wantUp: 7, wantDown: 7, wantLabel: "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantUp, tt.amount.roundUp(tt.total))
			require.Equal(t, tt.wantDown, tt.amount.roundDown(tt.total))
			require.Equal(t, tt.wantLabel, tt.amount.String())
		})
	}
}
