package demo

import (
	"crypto/sha1" //nolint:gosec // Freight names are content digests, as Kargo derives them
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Names the story uses.
const (
	// Project is the Kargo Project (namespace).
	Project = "shop"
	// Warehouse produces the two Freight.
	Warehouse = "guestbook"
	// AdoptedStage is the Stage whose template the fleet renders per target.
	AdoptedStage = "prod"
	// FleetStageName is the FleetStage.
	FleetStageName = "prod"
	// GoodAlias and BadAlias are the Freight aliases of the two versions.
	GoodAlias = "v1.4.0"
	BadAlias  = "v1.5.0"
	// ErrorAlias is the Freight alias of the version the error-rate chapter
	// ships: it promotes without a failed step, but its service fails
	// ErrorAliasErrorRatio of its requests.
	ErrorAlias = "v1.5.1"
)

// The error-rate gate of the canary wave.
const (
	// ErrorRateMetric names the canary wave's analysis metric.
	ErrorRateMetric = "error-rate"
	// ErrorRateQuery is its query: the share of failed requests of the
	// wave's targets over the last 5 s, from the counters the Kargo
	// simulator serves for each target.
	ErrorRateQuery = `sum(rate(kargo_simulator_http_requests_total{code="500", cluster=~"{{targets.regex}}"}[5s]))
/ sum(rate(kargo_simulator_http_requests_total{cluster=~"{{targets.regex}}"}[5s]))`
	// ErrorRateCondition passes a measurement below 1 % of failed requests.
	ErrorRateCondition = "result < 0.01"
	// ErrorAliasErrorRatio is the share of failed requests of a target
	// running ErrorAlias; every other Freight fails
	// kargosim.DefaultServiceErrorRatio of them.
	ErrorAliasErrorRatio = 0.05
	// errorRateInterval and errorRateCount: three measurements a second
	// apart.
	errorRateInterval = time.Second
	errorRateCount    = 3
)

// Wave names, in promotion order.
const (
	WavePilot    = "pilot"
	WaveCanary   = "canary"
	WaveGeneral  = "general"
	WaveCritical = "critical"
)

// Target labels and tiers.
const (
	regionLabel  = "region"
	tierLabel    = "tier"
	tierPilot    = "pilot"
	tierStandard = "standard"
	tierCritical = "critical"
)

// regions the fleet spans; targets are spread over them evenly. The bad
// Freight breaks the clusters of the regions in badRegions.
var (
	regions    = []string{"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1"}
	badRegions = map[string]bool{"eu-west-1": true, "eu-central-1": true}
)

// Scenario is the story's input: sizes and speeds.
type Scenario struct {
	// Targets is the number of targets (default 200).
	Targets int
	// StepDelay is how long each simulated step of a target Promotion runs
	// (default 300ms).
	StepDelay time.Duration
	// PrometheusURL, when set, gates the canary wave on the error rate of
	// its targets, read from this Prometheus (ErrorRateQuery).
	PrometheusURL string
}

func (s Scenario) withDefaults() Scenario {
	if s.Targets <= 0 {
		s.Targets = 200
	}
	if s.StepDelay <= 0 {
		s.StepDelay = 300 * time.Millisecond
	}
	return s
}

// FreightName returns the name Kargo would give Freight of one image tag: a
// digest of its artifacts.
func FreightName(tag string) string {
	sum := sha1.Sum([]byte(Warehouse + "/ghcr.io/example/guestbook:" + tag)) //nolint:gosec // a name, not a secret
	return hex.EncodeToString(sum[:])
}

// Freight returns the two Freight: the good one discovered first.
func Freight(now time.Time) []*kargo.Freight {
	return []*kargo.Freight{newFreight(GoodAlias, now.Add(-2*time.Minute)), newFreight(BadAlias, now.Add(-time.Minute))}
}

// ErrorFreight returns the Freight of ErrorAlias, discovered at now.
func ErrorFreight(now time.Time) *kargo.Freight { return newFreight(ErrorAlias, now) }

// newFreight returns the Freight of one image tag, as a Warehouse would.
func newFreight(tag string, discovered time.Time) *kargo.Freight {
	at := metav1.NewTime(discovered)
	return &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Namespace: Project, Name: FreightName(tag),
			Labels: map[string]string{"kargo.akuity.io/alias": tag}},
		Alias:  tag,
		Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: Warehouse},
		Images: []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil,
			`{"repoURL":"ghcr.io/example/guestbook","tag":%q,"digest":"sha256:%s"}`, tag, FreightName(tag))}},
		DiscoveredAt: &at,
	}
}

// ServiceMetrics configures the Kargo simulator's service metrics: the
// targets running ErrorAlias fail ErrorAliasErrorRatio of their requests.
func ServiceMetrics() *kargosim.ServiceMetrics {
	return &kargosim.ServiceMetrics{ErrorRatios: map[string]float64{FreightName(ErrorAlias): ErrorAliasErrorRatio}}
}

// WarehouseObject returns the Warehouse. The simulator runs no Warehouse
// controller: the demo creates its Freight.
func WarehouseObject() *kargo.Warehouse {
	return &kargo.Warehouse{
		ObjectMeta: metav1.ObjectMeta{Namespace: Project, Name: Warehouse},
		Spec: &apiextensionsv1.JSON{Raw: []byte(
			`{"subscriptions":[{"image":{"repoURL":"ghcr.io/example/guestbook","semverConstraint":"^1.0.0"}}]}`)},
	}
}

// Stage returns the adopted Stage "prod": what promoting ONE cluster means,
// written by the application team. Its steps are simulated by the Kargo
// simulator, each taking StepDelay.
func (s Scenario) Stage() *kargo.Stage {
	s = s.withDefaults()
	return &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: Project, Name: AdoptedStage},
		Spec: kargo.StageSpec{
			RequestedFreight: []kargo.FreightRequest{{
				Origin:  kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: Warehouse},
				Sources: kargo.FreightSources{Direct: true},
			}},
			Vars: []kargo.ExpressionVariable{{Name: kargosim.DelayVar, Value: s.StepDelay.String()}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{
				{Uses: "kustomize-set-image", As: "image", Config: rawJSON(
					`{"path":"./env/${{ vars.fleetTargetId }}","images":[{"image":"ghcr.io/example/guestbook"}]}`)},
				{Uses: "argocd-update", As: "sync", Config: rawJSON(
					`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}","namespace":"argocd"}]}`)},
			}}},
		},
	}
}

// InlineTargets returns the targets: spread over five regions, two pilots,
// a critical tenth, the rest standard. Targets in the eu regions carry the
// simulator's fault knobs, confined to the bad Freight: its sync step fails
// there.
func (s Scenario) InlineTargets() []fleetv1alpha1.InlineTarget {
	s = s.withDefaults()
	out := make([]fleetv1alpha1.InlineTarget, 0, s.Targets)
	for i := range s.Targets {
		region, n := regions[i%len(regions)], i/len(regions)
		name := fmt.Sprintf("%s-%02d", region, n)
		tier := tierStandard
		switch {
		case n == 0 && strings.HasPrefix(region, "us-"):
			tier = tierPilot
		case n%10 == 9:
			tier = tierCritical
		}
		params := map[string]string{"server": "https://" + name + ".k8s.example.com"}
		if badRegions[region] {
			params[kargosim.FaultVar] = kargosim.FaultFail
			params[kargosim.FaultStepVar] = "sync"
			params[kargosim.FaultFreightVar] = BadAlias
		}
		out = append(out, fleetv1alpha1.InlineTarget{
			Name:   name,
			Labels: map[string]string{regionLabel: region, tierLabel: tier},
			Params: params,
		})
	}
	return out
}

// FleetStage returns the FleetStage: four waves, automatic rollback; with
// a PrometheusURL, the canary wave is gated on its error rate.
func (s Scenario) FleetStage() *fleetv1alpha1.FleetStage {
	s = s.withDefaults()
	tier := func(t string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{tierLabel: t}}
	}
	fs := &fleetv1alpha1.FleetStage{
		TypeMeta:   metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetStage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Project, Name: FleetStageName},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: AdoptedStage},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{
				Kind: fleetv1alpha1.InlineSource, Inline: s.InlineTargets(),
			}}},
			Waves: []fleetv1alpha1.Wave{
				{Name: WavePilot, Selector: tier(tierPilot), MaxConcurrent: intOrString("100%")},
				{Name: WaveCanary, Selector: tier(tierStandard), Count: intOrString("10%"),
					MaxConcurrent: intOrString("50%"), MaxFailures: intOrString("10%")},
				{Name: WaveGeneral, Selector: tier(tierStandard), MaxConcurrent: intOrString("50%"),
					MaxFailures: intOrString("5%")},
				{Name: WaveCritical, MaxConcurrent: intOrString("100%"), Approval: fleetv1alpha1.ApprovalRequired},
			},
			Policy: fleetv1alpha1.FleetPolicy{
				Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic,
					MaxConcurrent: intOrString("50%")},
			},
		},
	}
	if s.PrometheusURL != "" {
		fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: s.PrometheusURL}}
		for i := range fs.Spec.Waves {
			if fs.Spec.Waves[i].Name != WaveCanary {
				continue
			}
			fs.Spec.Waves[i].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{{
				Name:             ErrorRateMetric,
				Query:            ErrorRateQuery,
				Interval:         &metav1.Duration{Duration: errorRateInterval},
				Count:            ptr.To[int32](errorRateCount),
				SuccessCondition: ErrorRateCondition,
			}}}
		}
	}
	return fs
}

// Preview plans the FleetStage offline, with the planner the controller
// uses: who is in which wave.
func (s Scenario) Preview() (*plan.WavePlan, error) {
	fs := s.FleetStage()
	return plan.Plan(&fs.Spec, plan.PlanInput{
		Seed:       fs.Namespace + "/" + fs.Name,
		Candidates: inventory.FromInline(fs.Spec.Targets.Sources[0].Inline),
	})
}

// Breakable counts the members of a planned wave the bad Freight breaks.
func Breakable(w *plan.PlannedWave) int {
	n := 0
	for _, t := range w.Members {
		if badRegions[t.Labels[regionLabel]] {
			n++
		}
	}
	return n
}

func intOrString(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
