"""The old path of `kraftsim.sim.engine.member`, kept only because `sim/admin.py` (whose
admin ops are being turned into methods on another branch) imports it from here; remove
once admin.py imports kraftsim.sim.engine.member."""

from kraftsim.sim.engine.member import Member, entry_at

__all__ = ["Member", "entry_at"]
