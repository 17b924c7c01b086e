package stepserver

// RBAC the step server needs besides the markers on authorize, generated
// into the chart's ClusterRole (make generate). Every replica serves steps:
// it reads the calling Promotion and its Stage, the FleetStage (from the
// manager's cache) and the Freight's approvals (cached too), reads Project
// namespaces for token revocations, and records intent on FleetRollouts
// through the steps' store (steps.APIStore).
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions;stages;freights,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages;fleetrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=create;patch
