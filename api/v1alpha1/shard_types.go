package v1alpha1

// Shard names. Kargo copies a Stage's spec.shard into a label, so a shard
// name is a label value.
const (
	// MaxShardNameLength bounds a shard name: it becomes a label value.
	MaxShardNameLength = 63
	// ShardNamePattern is the form of a shard name: a label value that is
	// not empty. The empty shard is Kargo's default controller.
	ShardNamePattern = `^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
)

// ShardsSpec says which Kargo shard, that is which Kargo controller, runs the
// Stages and Promotions a FleetStage generates. Without it kargo-fleet does
// not set spec.shard on its Stages (every Stage keeps whatever shard it
// has, none by default: the default Kargo controller).
//
// +kubebuilder:validation:XValidation:rule="(has(self.targetLabel) ? 1 : 0) + (has(self.targetParam) ? 1 : 0) + (has(self.expression) ? 1 : 0) <= 1",message="spec.shards: set at most one of targetLabel, targetParam or expression"
// +kubebuilder:validation:XValidation:rule="!has(self.limits) || self.limits.all(l, self.limits.exists_one(x, x.shard == l.shard))",message="spec.shards.limits: shard names must be unique"
type ShardsSpec struct {
	// targetLabel is the target label whose value is the target's shard,
	// e.g. topology.kubernetes.io/region. A target without the label (or
	// with an empty value) takes the default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	TargetLabel string `json:"targetLabel,omitempty"`

	// targetParam is the target parameter whose value is the target's
	// shard. A target without the parameter (or with an empty value) takes
	// the default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	TargetParam string `json:"targetParam,omitempty"`

	// expression is an expr-lang expression over the target (name, source,
	// labels, params; as in spec.targets.selector.expression) returning the
	// target's shard as a string, e.g.
	// `labels.region startsWith "eu-" ? "eu" : "us"`. An empty result takes
	// the default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Expression string `json:"expression,omitempty"`

	// default is the shard of targets for which targetLabel, targetParam or
	// expression yields nothing (of every target when none is set). Empty:
	// Kargo's default controller.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	Default string `json:"default,omitempty"`

	// waveShard is the shard of the wave Stages, whose Promotions run the
	// fleet-wave step (they call only the step server). Empty: Kargo's
	// default controller.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	WaveShard string `json:"waveShard,omitempty"`

	// maxConcurrent is the most target Promotions in flight at once on one
	// shard, across every wave and rollout of this FleetStage, so one
	// shard's Kargo controller is not flooded while the others idle. It
	// applies to every shard without an entry in limits (the default
	// controller's shard included). Unset: no per-shard limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxConcurrent *int32 `json:"maxConcurrent,omitempty"`

	// limits set maxConcurrent for single shards.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Limits []ShardLimit `json:"limits,omitempty"`
}

// ShardCount is a shard and how many targets are on it.
type ShardCount struct {
	// shard is the shard's name; "" is Kargo's default controller.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Shard string `json:"shard"`
	// targets is the number of targets whose Stage is on the shard.
	// +required
	Targets int32 `json:"targets"`
}

// ShardLimit bounds the target Promotions in flight on one shard.
type ShardLimit struct {
	// shard is the shard's name; "" is Kargo's default controller.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	Shard string `json:"shard"`

	// maxConcurrent is the most target Promotions in flight on the shard.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxConcurrent int32 `json:"maxConcurrent"`
}
