package testcluster

// Converged reports why the cluster has not converged yet (nil once it
// has): the condition WaitConverged waits for, for tests that combine it
// with their own.
func (c *Cluster) Converged() error { return c.converged() }
