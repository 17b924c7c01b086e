package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// InFlightPolicy says what happens to running target Promotions on a halt.
// +kubebuilder:validation:Enum=Finish;Abort
type InFlightPolicy string

// In-flight policies.
const (
	// InFlightFinish lets running target Promotions finish.
	InFlightFinish InFlightPolicy = "Finish"
	// InFlightAbort aborts running target Promotions through Kargo.
	InFlightAbort InFlightPolicy = "Abort"
)

// RollbackMode says when the fleet rolls back.
// +kubebuilder:validation:Enum=Manual;Automatic
type RollbackMode string

// Rollback modes.
const (
	// RollbackManual rolls back only on request (CLI or fleet-rollback step).
	RollbackManual RollbackMode = "Manual"
	// RollbackAutomatic rolls back as soon as a threshold is breached.
	RollbackAutomatic RollbackMode = "Automatic"
)

// SupersedePolicy says what a newer Freight does to a running rollout.
// +kubebuilder:validation:Enum=Queue;Supersede
type SupersedePolicy string

// Supersede policies.
const (
	// SupersedeQueue lets the running rollout finish first.
	SupersedeQueue SupersedePolicy = "Queue"
	// SupersedeReplace stops starting targets for the old Freight and moves on.
	SupersedeReplace SupersedePolicy = "Supersede"
)

// DriftPolicy says what the controller does about drifted targets: targets
// running Freight that neither the FleetStage's last good Freight nor an
// open rollout explains.
// +kubebuilder:validation:Enum=Report;Revert
type DriftPolicy string

// Drift policies.
const (
	// DriftReport reports drifted targets in status, Events and metrics.
	DriftReport DriftPolicy = "Report"
	// DriftRevert reports drifted targets and promotes the intended Freight
	// back to each, once per drift, within the change windows.
	DriftRevert DriftPolicy = "Revert"
)

// FleetPolicy holds fleet-wide rules.
type FleetPolicy struct {
	// maxFailures is a fleet-wide failure threshold across every wave of one
	// rollout: a number or a percentage of all targets (rounded down). Unset:
	// only per-wave thresholds apply.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 0 : string(self).matches('^(100|[1-9]?[0-9])%$')",message="maxFailures must be a non-negative integer or a percentage between 0% and 100%"
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// onHalt says what happens to running target Promotions when a threshold
	// is breached. Default Finish.
	// +optional
	OnHalt InFlightPolicy `json:"onHalt,omitempty"`

	// newerFreight says what a newer Freight does to a running rollout.
	// Default Queue.
	// +optional
	NewerFreight SupersedePolicy `json:"newerFreight,omitempty"`

	// constraints limit targets in flight per label value, across every
	// rollout of this FleetStage.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Constraints []ConcurrencyConstraint `json:"constraints,omitempty"`

	// windows are change windows; outside an allowing window (or inside a
	// denying one) no new target Promotion starts.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Windows []ChangeWindow `json:"windows,omitempty"`

	// rollback says when and how the fleet returns to its last good Freight.
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`

	// historyLimit is how many finished forward FleetRollouts are kept, each
	// with its rollback; older ones and their plan snapshots are deleted.
	// Unfinished rollouts are never deleted. Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	HistoryLimit *int32 `json:"historyLimit,omitempty"`

	// drift says what happens to targets whose Freight drifted from what
	// the fleet intends: Report or Revert. Default Report.
	// +optional
	Drift DriftPolicy `json:"drift,omitempty"`
}

// ConcurrencyConstraint limits targets in flight per value of a label.
type ConcurrencyConstraint struct {
	// name identifies the constraint in status and messages.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// labelKey groups targets by this label's value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	LabelKey string `json:"labelKey"`

	// maxInFlight is the most targets of one label value in flight at once.
	// +required
	// +kubebuilder:validation:Minimum=1
	MaxInFlight int32 `json:"maxInFlight"`

	// selector restricts the constraint to matching targets.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// WindowType says whether a window allows or denies changes.
// +kubebuilder:validation:Enum=Allow;Deny
type WindowType string

// Window types.
const (
	// WindowAllow permits changes while open; with any allow window present,
	// changes need one to be open.
	WindowAllow WindowType = "Allow"
	// WindowDeny forbids changes while open; deny wins over allow.
	WindowDeny WindowType = "Deny"
)

// ChangeWindow is a recurring period that allows or denies changes.
type ChangeWindow struct {
	// name identifies the window in status and messages.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// type is Allow or Deny.
	// +required
	Type WindowType `json:"type"`

	// schedule is a five-field cron expression for when the window opens.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// duration is how long the window stays open.
	// +required
	Duration metav1.Duration `json:"duration"`

	// timeZone is an IANA time zone for the schedule. Default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// selector restricts the window to matching targets. Unset: every target.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// RollbackPolicy says when and how the fleet rolls back.
type RollbackPolicy struct {
	// mode is Manual or Automatic (on a threshold breach). Default Manual.
	// +optional
	Mode RollbackMode `json:"mode,omitempty"`

	// maxConcurrent is how many targets roll back at once, a number or a
	// percentage of the targets being rolled back. Default: the wave's maxConcurrent.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 1 : string(self).matches('^(100|[1-9][0-9]?)%$')",message="maxConcurrent must be a positive integer or a percentage between 1% and 100%"
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`
}
