package doctor

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
)

func TestPickRelease(t *testing.T) {
	t.Parallel()
	def := Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Deployment: "kargo-fleet"}
	prod := Release{Name: "prod", Namespace: "platform", Deployment: "prod-kargo-fleet"}
	tests := []struct {
		name    string
		found   []Release
		want    string
		wantRel Release
		wantMsg string
	}{
		{name: "the only release, any name", found: []Release{prod}, wantRel: prod},
		{name: "the release asked for", found: []Release{def, prod}, want: "prod", wantRel: prod},
		{name: "several, none asked for", found: []Release{prod, def}, wantMsg: `2 kargo-fleet releases: release "kargo-fleet" ` +
			`(Deployment kargo-fleet/kargo-fleet), release "prod" (Deployment platform/prod-kargo-fleet)`},
		{name: "the release asked for is not there", found: []Release{def}, want: "prod",
			wantMsg: `no kargo-fleet Deployment of release "prod" (label app.kubernetes.io/instance=prod)`},
		{name: "none", wantMsg: "no kargo-fleet Deployment (label app.kubernetes.io/name=kargo-fleet)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rel, ok, msg := PickRelease(tt.found, tt.want)
			require.Equal(t, tt.wantMsg == "", ok)
			require.Equal(t, tt.wantRel, rel)
			require.Equal(t, tt.wantMsg, msg)
		})
	}
}

// chartSetting finds the chart values a fix tells to set: key=value where
// the key is a dotted values path.
var chartSetting = regexp.MustCompile(`\b([a-z][A-Za-z]*(?:\.[a-z][A-Za-z]*)+)=([^\s;,)]+)`)

// TestFixesAreChartValues renders the chart with every value a fix names,
// so a fix never suggests what the chart's schema refuses; and shows that
// the check would catch a value the schema refuses.
func TestFixesAreChartValues(t *testing.T) {
	t.Parallel()
	rel := Release{Name: "prod", Namespace: "platform", Deployment: "prod-kargo-fleet"}
	fixes := map[string]string{
		"no webhook configuration":                  WebhookEnableFix(rel),
		"no caBundle, cert-manager mode":            CABundleFix(rel, "platform/prod-kargo-fleet-webhook"),
		"no caBundle, generated or own Secret mode": CABundleFix(rel, ""),
	}
	for name, fix := range fixes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, fix, "helm upgrade prod charts/kargo-fleet -n platform --reset-then-reuse-values")
			settings := chartSetting.FindAllStringSubmatch(fix, -1)
			require.NotEmpty(t, settings, "the fix names a chart value: %s", fix)
			for _, m := range settings {
				values := map[string]any{}
				require.NoError(t, strvals.ParseInto(m[0], values))
				_, err := helmchart.Render(helmchart.Release{Name: rel.Name, Namespace: rel.Namespace, Values: values})
				require.NoError(t, err, "the chart refuses %s, which the fix tells to set", m[0])
			}
		})
	}
	t.Run("a value the schema refuses is caught", func(t *testing.T) {
		t.Parallel()
		m := chartSetting.FindStringSubmatch("install the chart with webhook.certManager=true")
		require.Equal(t, "webhook.certManager=true", m[0])
		values := map[string]any{}
		require.NoError(t, strvals.ParseInto(m[0], values))
		_, err := helmchart.Render(helmchart.Release{Name: rel.Name, Namespace: rel.Namespace, Values: values})
		require.ErrorContains(t, err, "certManager")
	})
}
