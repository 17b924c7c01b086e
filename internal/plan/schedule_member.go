package plan

// Member returns the plan's member with that ID, looked up in the index
// built once per plan rather than by scanning its waves.
func (idx *ScheduleIndex) Member(id string) (*Target, bool) {
	ref, ok := idx.members[id]
	if !ok {
		return nil, false
	}
	return idx.waves[ref.wave].members[ref.pos], true
}
