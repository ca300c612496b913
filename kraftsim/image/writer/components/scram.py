"""ScramImage.write: one UserScramCredentialRecord per (mechanism, user), or their loss
below the metadata.version that brought SCRAM."""

from __future__ import annotations

from typing import Iterator

from kraftsim.image.components.scram import ScramImage, mechanism_enum_name, mechanism_name
from kraftsim.image.writer.loss import SCRAM_CREDENTIALS, scram_summary
from kraftsim.image.writer.target import WriteTarget
from kraftsim.protocol.entries import Payload


def write(scram: ScramImage, target: WriteTarget) -> Iterator[Payload]:
    if not scram.credentials:
        return
    creds = list(scram.sorted_credentials())
    if target.holds(SCRAM_CREDENTIALS):
        sc, scv = target.record("UserScramCredentialRecord")
        for (mech, user), c in creds:
            yield Payload(sc, scv, sc.cls(name=user, mechanism=mech, salt=c.salt, stored_key=c.stored_key,
                                          server_key=c.server_key, iterations=c.iterations))
        return
    by_mechanism = sorted((mech, i) for i, ((mech, _), _) in enumerate(creds))
    summary = scram_summary((mechanism_enum_name(mech), creds[i][0][1]) for mech, i in by_mechanism)
    for (mech, user), _ in creds:
        target.lose(SCRAM_CREDENTIALS, f"{mechanism_name(mech)} user {user}", ("scram", mech, user), summary)
