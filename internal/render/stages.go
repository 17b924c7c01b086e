package render

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// The ClusterPromotionTask every wave Stage's promotion template calls. The
// step server learns the FleetStage and the wave from the wave Stage's labels,
// so the task needs no variable but, optionally, where the server is.
const (
	// WaveTaskName is the fleet-wave ClusterPromotionTask.
	WaveTaskName = "fleet-wave"
	// WaveStepAlias is the alias of the task step in a wave Stage's template.
	WaveStepAlias = "wave"
	// WaveTaskVarServerURL overrides the task's default step server URL.
	WaveTaskVarServerURL = "serverURL"
)

// Input is what Stages renders from.
type Input struct {
	// FleetStage is the owner of every generated Stage.
	FleetStage *fleetv1alpha1.FleetStage
	// Base is the Stage being expanded.
	Base BaseStage
	// Plan is the FleetStage's current WavePlan.
	Plan *plan.WavePlan
	// StepServerURL, when set, is passed to the fleet-wave task as its
	// serverURL (else the task's default, the in-cluster Service, applies).
	// StepServerURLs.PerShard, when it names the wave Stages' shard, wins.
	StepServerURL string
	// StepServerURLs maps shards to the step server URL their Kargo
	// controller uses (its Default is ignored: StepServerURL is the default).
	StepServerURLs map[string]string
}

// urls is the step server URL of every shard.
func (in *Input) urls() StepServerURLs {
	return StepServerURLs{Default: in.StepServerURL, PerShard: in.StepServerURLs}
}

// Output is the desired set of generated Stages.
type Output struct {
	// Waves are the wave Stages, in wave order.
	Waves []kargo.Stage
	// Targets are the target Stages, in wave then member order.
	Targets []kargo.Stage
	// VarClashes counts target params that were not rendered because a
	// variable of that name already existed, by variable name.
	VarClashes map[string]int
}

// Stages renders the wave Stages and target Stages of in.Plan. Unassigned
// targets get no Stage: they are reported in status instead.
func Stages(in Input) Output {
	fs := in.FleetStage
	out := Output{VarClashes: map[string]int{}}
	prevStage := ""
	var prevSoak time.Duration
	shards, urls := fs.Spec.Shards, in.urls()
	waveShard := ""
	if shards != nil {
		waveShard = shards.WaveShard
	}
	for _, w := range in.Plan.Waves {
		freight := requestedFreight(in.Base.RequestedFreight, prevStage, prevSoak)
		waveStage := WaveStageName(fs.Name, w.Name)
		out.Waves = append(out.Waves, kargo.Stage{
			TypeMeta:   metav1.TypeMeta{APIVersion: kargo.GroupVersion.String(), Kind: "Stage"},
			ObjectMeta: objectMeta(fs, waveStage, map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleWave, fleetv1alpha1.WaveLabel: w.Name}, nil),
			Spec: kargo.StageSpec{
				RequestedFreight:  freight,
				PromotionTemplate: waveTemplate(urls.For(waveShard)),
			},
		})
		if shards != nil {
			setShard(&out.Waves[len(out.Waves)-1], waveShard)
		}
		for i := range w.Members {
			t := &w.Members[i]
			vars, clashes := targetVars(in.Base.Vars, fs.Name, w.Name, t, shardVars(shards != nil, t.Shard, urls))
			for _, c := range clashes {
				out.VarClashes[c]++
			}
			out.Targets = append(out.Targets, kargo.Stage{
				TypeMeta: metav1.TypeMeta{APIVersion: kargo.GroupVersion.String(), Kind: "Stage"},
				ObjectMeta: objectMeta(fs, TargetStageName(fs.Name, t.ID),
					map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget, fleetv1alpha1.WaveLabel: w.Name, fleetv1alpha1.TargetLabel: t.ID},
					map[string]string{fleetv1alpha1.TargetNameAnnotation: t.Name}),
				Spec: kargo.StageSpec{
					RequestedFreight:  freight,
					Vars:              vars,
					PromotionTemplate: in.Base.PromotionTemplate.DeepCopy(),
					Verification:      copyJSON(in.Base.Verification),
				},
			})
			if shards != nil {
				setShard(&out.Targets[len(out.Targets)-1], t.Shard)
			}
		}
		prevStage, prevSoak = waveStage, w.Soak
	}
	return out
}

// requestedFreight is what a wave (and its targets) takes: the base Stage's
// sources for the first wave, the previous wave Stage after its soak for the
// others. Every origin of the base Stage is requested.
func requestedFreight(base []kargo.FreightRequest, prevStage string, prevSoak time.Duration) []kargo.FreightRequest {
	out := make([]kargo.FreightRequest, 0, len(base))
	for _, rf := range base {
		if prevStage == "" {
			out = append(out, *rf.DeepCopy())
			continue
		}
		src := kargo.FreightSources{Stages: []string{prevStage}}
		if prevSoak > 0 {
			src.RequiredSoakTime = &metav1.Duration{Duration: prevSoak}
		}
		out = append(out, kargo.FreightRequest{Origin: rf.Origin, Sources: src})
	}
	return out
}

func waveTemplate(serverURL string) *kargo.PromotionTemplate {
	step := kargo.PromotionStep{
		Task: &kargo.PromotionTaskRef{Kind: kargo.ClusterPromotionTaskKind, Name: WaveTaskName},
		As:   WaveStepAlias,
	}
	if serverURL != "" {
		step.Vars = []kargo.ExpressionVariable{{Name: WaveTaskVarServerURL, Value: serverURL}}
	}
	return &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{step}}}
}

func objectMeta(fs *fleetv1alpha1.FleetStage, name string, labels, annotations map[string]string) metav1.ObjectMeta {
	l := map[string]string{fleetv1alpha1.FleetStageLabel: fs.Name}
	for k, v := range labels {
		l[k] = v
	}
	controller, block := true, true
	return metav1.ObjectMeta{
		Namespace:   fs.Namespace,
		Name:        name,
		Labels:      l,
		Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         fleetv1alpha1.GroupVersion.String(),
			Kind:               "FleetStage",
			Name:               fs.Name,
			UID:                fs.UID,
			Controller:         &controller,
			BlockOwnerDeletion: &block,
		}},
	}
}

func copyJSON(j *apiextensionsv1.JSON) *apiextensionsv1.JSON {
	if j == nil {
		return nil
	}
	return &apiextensionsv1.JSON{Raw: append([]byte(nil), j.Raw...)}
}
