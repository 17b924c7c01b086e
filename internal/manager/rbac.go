package manager

// RBAC the manager itself needs, generated into the chart's ClusterRole
// (make generate): the secure metrics endpoint authenticates its callers'
// bearer tokens and asks whether they may get /metrics.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
