package argocd

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is Argo CD's API group and version.
var GroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// ApplicationKind is the Application kind; ApplicationListKind its list.
const (
	ApplicationKind     = "Application"
	ApplicationListKind = "ApplicationList"
)

// Application holds the fields of an Argo CD Application kargo-fleet reads.
// Unknown fields are dropped when it is decoded.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ApplicationSpec   `json:"spec,omitempty"`
	Operation         *Operation        `json:"operation,omitempty"`
	Status            ApplicationStatus `json:"status,omitempty"`
}

// ApplicationSpec is the part of an Application's spec kargo-fleet reads.
type ApplicationSpec struct {
	// Project is the AppProject; empty means "default".
	Project     string      `json:"project,omitempty"`
	Destination Destination `json:"destination,omitempty"`
	Source      *Source     `json:"source,omitempty"`
	Sources     []Source    `json:"sources,omitempty"`
	SyncPolicy  *SyncPolicy `json:"syncPolicy,omitempty"`
}

// SyncPolicy says whether Argo CD syncs the Application by itself.
type SyncPolicy struct {
	Automated *AutomatedSync `json:"automated,omitempty"`
}

// AutomatedSync is Argo CD's automated sync; SelfHeal also syncs when the
// live state drifts from Git.
type AutomatedSync struct {
	SelfHeal bool `json:"selfHeal,omitempty"`
}

// SelfHeals reports whether Argo CD brings the Application's live state
// back to Git by itself.
func (a *Application) SelfHeals() bool {
	return a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.Automated != nil && a.Spec.SyncPolicy.Automated.SelfHeal
}

// Destination is where an Application deploys: a cluster by server URL
// or by name, and a namespace.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Source is where an Application's manifests come from.
type Source struct {
	RepoURL string `json:"repoURL,omitempty"`
}

// Condition is an Application condition (ComparisonError, ...).
type Condition struct {
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
}

// ApplicationStatus is the part of an Application's status kargo-fleet
// reads.
type ApplicationStatus struct {
	Sync           SyncStatus       `json:"sync,omitempty"`
	Health         HealthStatus     `json:"health,omitempty"`
	OperationState *OperationState  `json:"operationState,omitempty"`
	Summary        Summary          `json:"summary,omitempty"`
	Conditions     []Condition      `json:"conditions,omitempty"`
	Resources      []ResourceStatus `json:"resources,omitempty"`
}

// ResourceStatus is one live resource of an Application, as Argo CD
// judged it.
type ResourceStatus struct {
	Kind      string        `json:"kind,omitempty"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name,omitempty"`
	Health    *HealthStatus `json:"health,omitempty"`
}

// HealthMessage says why the Application has its health: Argo CD's own
// message, else (Argo CD v3 leaves the Application's empty) the first
// resource with the same health and a message.
func (a *Application) HealthMessage() string {
	h := a.Status.Health
	if h.Message != "" {
		return h.Message
	}
	for _, r := range a.Status.Resources {
		if r.Health != nil && r.Health.Status == h.Status && r.Health.Message != "" {
			name := r.Name
			if r.Namespace != "" {
				name = r.Namespace + "/" + r.Name
			}
			return fmt.Sprintf("%s %s: %s", r.Kind, name, r.Health.Message)
		}
	}
	return ""
}

// SyncStatus says whether the live state matches Git, at which revision.
type SyncStatus struct {
	// Status is Synced, OutOfSync or Unknown.
	Status    string   `json:"status,omitempty"`
	Revision  string   `json:"revision,omitempty"`
	Revisions []string `json:"revisions,omitempty"`
}

// Sync statuses.
const (
	SyncStatusSynced    = "Synced"
	SyncStatusOutOfSync = "OutOfSync"
)

// HealthStatus is Argo CD's judgement of the live resources.
type HealthStatus struct {
	// Status is Healthy, Progressing, Degraded, Suspended, Missing or
	// Unknown.
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// Health statuses.
const (
	HealthHealthy     = "Healthy"
	HealthProgressing = "Progressing"
	HealthDegraded    = "Degraded"
	HealthMissing     = "Missing"
)

// Operation is a sync Argo CD is asked to run (spec-level "operation", set
// by whoever starts a sync) or ran (status.operationState.operation).
type Operation struct {
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
	Info        []Info             `json:"info,omitempty"`
	Sync        *SyncOperation     `json:"sync,omitempty"`
}

// OperationInitiator names who started an operation: a user (Argo CD's
// UI or CLI, or Kargo with the Promotion's create-actor), or Argo CD's
// automated sync.
type OperationInitiator struct {
	Username  string `json:"username,omitempty"`
	Automated bool   `json:"automated,omitempty"`
}

// Info is a name and value recorded on an operation.
type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SyncOperation is what a sync operation asked for.
type SyncOperation struct {
	Revision  string   `json:"revision,omitempty"`
	Revisions []string `json:"revisions,omitempty"`
}

// OperationState is the state of the Application's newest operation.
type OperationState struct {
	Operation  Operation            `json:"operation,omitempty"`
	Phase      string               `json:"phase,omitempty"`
	Message    string               `json:"message,omitempty"`
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	StartedAt  metav1.Time          `json:"startedAt,omitempty"`
	FinishedAt *metav1.Time         `json:"finishedAt,omitempty"`
}

// Operation phases.
const (
	OperationRunning     = "Running"
	OperationTerminating = "Terminating"
	OperationFailed      = "Failed"
	OperationError       = "Error"
	OperationSucceeded   = "Succeeded"
)

// SyncOperationResult is what a finished sync applied.
type SyncOperationResult struct {
	Revision  string   `json:"revision,omitempty"`
	Revisions []string `json:"revisions,omitempty"`
}

// Summary lists what the Application's live resources run.
type Summary struct {
	Images []string `json:"images,omitempty"`
}
