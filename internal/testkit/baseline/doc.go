// Package baseline models, for benchmarks, the designs schedstatd is
// measured against. They are written the way cAdvisor's libcontainer
// handler reads schedstat, not the way schedstatd would:
//
//   - ReadFile reads /proc/<pid>/schedstat with os.ReadFile on every pass,
//     with the path joined anew and the fields split and parsed through
//     strings, as cAdvisor does. OpenReadClose is the same without the
//     allocations: open, read into a reused buffer, close.
//   - PidMap is one cgroup's state: the last counters of every id it read,
//     keyed by the id alone. Unpruned, it never forgets an id, so it grows
//     with every task the cgroup ever had and sums all of them on every
//     pass (cAdvisor before its fix). Pruned, it moves the counters of ids
//     a pass did not list into a saved total and deletes them (cAdvisor
//     after its fix); keyed by id alone, it still loses an old task's time
//     when a new task takes the id between two passes.
//   - Handlers is one PidMap per cgroup. Per level, each cgroup lists and
//     reads the tasks of its whole subtree, as cAdvisor's handler of a
//     container does, so a task at depth d is read d+1 times per pass;
//     flat, each cgroup reads only its own tasks.
//
// Nothing here is used by the daemon.
package baseline
