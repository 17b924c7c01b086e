package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BlockedTargetsPolicy says whether a wave can pass while some of its
// targets may not run the rollout's Freight.
// +kubebuilder:validation:Enum=Hold;Skip
type BlockedTargetsPolicy string

// Blocked-target policies.
const (
	// BlockedTargetsHold: a wave with a blocked target never passes; the
	// rollout waits in that wave until the policy admits the Freight, the
	// targets leave the fleet, or someone aborts it.
	BlockedTargetsHold BlockedTargetsPolicy = "Hold"
	// BlockedTargetsSkip: blocked targets are left on what they run and the
	// wave passes without them.
	BlockedTargetsSkip BlockedTargetsPolicy = "Skip"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=fpol,categories=kargo-fleet
// +kubebuilder:printcolumn:name="Blocked targets",type=string,JSONPath=`.spec.blockedTargets`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// FreightPolicy says which Freight may run on which fleet targets. It is
// cluster-scoped on purpose: compliance rules belong to whoever owns the
// clusters (a platform or security team), not to the Project teams whose
// FleetStages they constrain, and Kubernetes RBAC on a cluster-scoped kind
// keeps them out of a Project admin's reach. A FleetStage never names the
// policies that govern it: every policy whose namespaceSelector matches the
// FleetStage's Project applies, so no team can opt out.
type FreightPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the rules.
	// +required
	Spec FreightPolicySpec `json:"spec"`
}

// FreightPolicySpec holds the rules of a FreightPolicy.
type FreightPolicySpec struct {
	// namespaceSelector selects the Projects (namespaces) whose fleets the
	// policy governs. Unset: every Project.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// rules each govern the targets their `targets` expression selects: the
	// Freight may run on such a target only when `require` holds.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Rules []FreightRule `json:"rules"`

	// blockedTargets says whether a wave passes while some of its targets
	// are blocked by a rule of this policy: Hold (the default: the wave
	// waits) or Skip (the wave passes without them). A rollout holds when
	// any policy that blocks one of its targets says Hold.
	// +optional
	BlockedTargets BlockedTargetsPolicy `json:"blockedTargets,omitempty"`
}

// FreightRule is one rule of a FreightPolicy. Both expressions are
// expr-lang (https://expr-lang.org) and see `target` (name, id, source,
// labels, params) and `freight` (name, alias, images[] with repoURL, tag
// and digest, commits[] with repoURL, id, branch and tag, charts[] with
// repoURL, name and version), plus the function semver(a, b) comparing two
// versions (-1, 0, 1).
// +kubebuilder:validation:XValidation:rule="has(self.require) || has(self.signatures)",message="a rule sets require, signatures or both"
type FreightRule struct {
	// name identifies the rule in status, refusals and Events.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// targets selects the targets the rule governs, e.g.
	// `target.labels.tier == "pci"`. Unset: every target.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Targets string `json:"targets,omitempty"`

	// require must hold for the Freight to run on a governed target, e.g.
	// `all(freight.images, {.repoURL startsWith "registry.corp/pci/" && .digest != ""})`.
	// An expression that fails to evaluate blocks the target. A rule sets
	// require, signatures or both.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Require string `json:"require,omitempty"`

	// signatures, when set, requires every image of the Freight to be
	// pinned by digest and signed (cosign-compatible signature in the
	// image's registry) by publicKey, and, when provenance is set, to carry
	// a signed SLSA provenance attestation from the given builder. An image
	// that cannot be verified (its registry unreachable) blocks the target
	// too, until it can be.
	// +optional
	Signatures *SignatureRequirement `json:"signatures,omitempty"`

	// message says, for people, what the rule demands; refusals quote it.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`

	// allowBreakGlass lets a break-glass Promotion (kargo-fleet
	// break-glass) bypass this rule. Default false: not even break-glass
	// puts a blocked Freight on a governed target.
	// +optional
	AllowBreakGlass bool `json:"allowBreakGlass,omitempty"`
}

// SignatureRequirement says who must have signed a Freight's images.
type SignatureRequirement struct {
	// publicKey is the PEM public key ("PUBLIC KEY", as cosign.pub holds
	// it: ECDSA, RSA or Ed25519) the images' signatures must verify with.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	PublicKey string `json:"publicKey"`

	// provenance, when set, also requires an SLSA provenance attestation
	// of each image (cosign's sha256-<digest>.att), signed by publicKey.
	// +optional
	Provenance *ProvenanceRequirement `json:"provenance,omitempty"`
}

// ProvenanceRequirement says which builder must have built the images.
type ProvenanceRequirement struct {
	// builderID must equal the provenance's builder id (SLSA v1
	// runDetails.builder.id, or v0.2 builder.id), e.g.
	// `https://github.com/slsa-framework/slsa-github-generator/.github/workflows/builder_go_slsa3.yml@refs/tags/v2.1.0`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	BuilderID string `json:"builderID"`
}

// +kubebuilder:object:root=true

// FreightPolicyList is a list of FreightPolicies.
type FreightPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FreightPolicy `json:"items"`
}
