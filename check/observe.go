package check

import (
	"fmt"
	"slices"
	"strings"

	"tasklist/kernel"
)

// taskView is what the final observation records of one findable task:
// the links a lost or misplaced effect would show in.
type taskView struct {
	pid, tgid int
	parent    int // the parent thread's pid
	pgid, sid int
	nice      int
	tracer    int // 0: not traced
	running   bool
}

// observation is the table after the burst, by pid.
type observation []taskView

func (o observation) String() string {
	var b strings.Builder
	for i, v := range o {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d", v.pid)
		if v.tgid != v.pid {
			fmt.Fprintf(&b, "(thread of %d)", v.tgid)
		}
		fmt.Fprintf(&b, " parent %d pgrp %d sid %d nice %d", v.parent, v.pgid, v.sid, v.nice)
		if v.tracer != 0 {
			fmt.Fprintf(&b, " traced by %d", v.tracer)
		}
		if !v.running {
			b.WriteString(" exited")
		}
	}
	return b.String()
}

// diff describes the first tasks where o and want differ.
func (o observation) diff(want observation) string {
	var out []string
	i, j := 0, 0
	for (i < len(o) || j < len(want)) && len(out) < 4 {
		switch {
		case j == len(want) || i < len(o) && o[i].pid < want[j].pid:
			out = append(out, fmt.Sprintf("kernel has %v, model has no %d", observation{o[i]}, o[i].pid))
			i++
		case i == len(o) || want[j].pid < o[i].pid:
			out = append(out, fmt.Sprintf("model has %v, kernel has no %d", observation{want[j]}, want[j].pid))
			j++
		default:
			if o[i] != want[j] {
				out = append(out, fmt.Sprintf("kernel %v, model %v", observation{o[i]}, observation{want[j]}))
			}
			i, j = i+1, j+1
		}
	}
	return strings.Join(out, "; ")
}

// observeKernel reads the table of k for every pid in pids.
func observeKernel(k *kernel.Kernel, pids []int) observation {
	root := k.RootNamespace()
	var o observation
	for _, pid := range pids {
		t := root.Lookup(pid)
		if t == nil {
			continue
		}
		// Accessors, not calls: they answer for an exited task too.
		v := taskView{pid: pid, tgid: t.TGIDIn(root), pgid: t.Getpgrp(), running: !t.Exited(),
			sid: t.ThreadGroup().SessionID(root), nice: t.Nice()}
		if p := t.Parent(); p != nil {
			v.parent = p.PIDIn(root)
		}
		if tr := t.Tracer(); tr != nil {
			v.tracer = tr.PIDIn(root)
		}
		o = append(o, v)
	}
	slices.SortFunc(o, func(a, b taskView) int { return a.pid - b.pid })
	return o
}

// observeModel reads the same from the model for the tasks the kernel
// names pids (all of them if pids is nil), naming tasks by the kernel's
// pids; ok is false when the model holds a task the kernel never made.
func observeModel(s *taskState, pids []int) (o observation, ok bool) {
	m := s.m
	for _, tid := range m.Tasks() {
		if nr, known := s.toKernel[tid]; known && pids != nil && !slices.Contains(pids, nr) {
			continue
		}
		in, _ := m.Info(tid)
		v := taskView{tgid: in.Tgid, parent: in.ParentTid, pgid: in.Getpgrp, sid: in.Getsid,
			nice: in.Nice, tracer: m.Tracer(tid), running: in.Running}
		var ok bool
		nrs := []*int{&v.tgid, &v.parent, &v.pgid, &v.sid, &v.tracer}
		if v.pid, ok = s.toKernel[tid]; !ok {
			return nil, false
		}
		for _, nr := range nrs {
			if *nr != 0 {
				if *nr, ok = s.toKernel[*nr]; !ok {
					return nil, false
				}
			}
		}
		o = append(o, v)
	}
	slices.SortFunc(o, func(a, b taskView) int { return a.pid - b.pid })
	return o, true
}
