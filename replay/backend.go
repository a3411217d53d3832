package replay

import (
	"tasklist/scenario"
	"tasklist/scenario/modelrun"
)

// backend is the model a replay makes its calls on: modelrun's backend, which, while a trace
// is compiled into a Program, also tells a recorder of every call made and every state read
// in place of one.
type backend struct {
	*modelrun.Backend
	rec *recorder
}

// Do implements scenario.Backend.
func (b *backend) Do(actor scenario.TaskRef, c scenario.Call) scenario.Result {
	if b.rec == nil {
		return b.Backend.Do(actor, c)
	}
	before := b.rec.snapshot()
	res := b.Backend.Do(actor, c)
	b.rec.did(actor, c, res, before)
	return res
}

// Start implements scenario.Backend.
func (b *backend) Start(actor scenario.TaskRef, c scenario.Call) error {
	if b.rec == nil {
		return b.Backend.Start(actor, c)
	}
	before := b.rec.snapshot()
	err := b.Backend.Start(actor, c)
	b.rec.started(actor, c, !b.Backend.Returned(actor), before)
	return err
}

// Join implements scenario.Backend.
func (b *backend) Join(actor scenario.TaskRef) scenario.Result {
	if b.rec == nil {
		return b.Backend.Join(actor)
	}
	before := b.rec.snapshot()
	res := b.Backend.Join(actor)
	b.rec.joined(actor, res, before)
	return res
}

// queried tells the recorder that actor's call c was answered by reading the model's state.
func (b *backend) queried(actor scenario.TaskRef, c *traceCall) {
	if b.rec != nil {
		b.rec.queried(actor, c)
	}
}
