"""The front ends: the Textual console (`console/`) and the headless log (`headless`). Both open a run through
`engine.launch` and read only its events and snapshots."""
