"""SCRAM credentials (`kafka-configs --entity-type users`, SCRAM-SHA-256 / SCRAM-SHA-512),
answered as Kafka answers them.

AlterUserScramCredentials goes to the active controller (a broker forwards it, KIP-590), which
checks each user's change with its own texts (kraftsim.controller.scram); the salt and salted
password are the client's, as Kafka's Admin client computes them from the password. Each
accepted user's change is recorded as an `alter-scram-credentials` step holding them (base64).
DescribeUserScramCredentials, which the tool asks for a user after its quotas, is answered from
the node's own image (ScramImage.describe).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from kraftsim.controller import ScramCredentialDeletion, ScramCredentialUpsertion
from kraftsim.image import describe_scram_users, mechanism_name
from kraftsim.wire.admin_handlers import ask_controller
from kraftsim.wire.handlers import Body, Handler, code
from kraftsim.wire.served import Listener, ServedCluster

DESCRIBE_USER_SCRAM_CREDENTIALS_KEY, ALTER_USER_SCRAM_CREDENTIALS_KEY = 50, 51


def alter_user_scram_credentials(served: ServedCluster, listener: Listener, version: int,
                                 body: Mapping[str, Any]) -> Body:
    deletions = [ScramCredentialDeletion(d["Name"], int(d["Mechanism"])) for d in body.get("Deletions") or []]
    upsertions = [ScramCredentialUpsertion(u["Name"], int(u["Mechanism"]), int(u["Iterations"]), bytes(u["Salt"]),
                                           bytes(u["SaltedPassword"])) for u in body.get("Upsertions") or []]
    at = served.sim.now_ms
    result = ask_controller(served, listener,
                            lambda: served.sim.send_alter_user_scram_credentials(deletions, upsertions))
    if isinstance(result, tuple):
        users = dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions])
        return {"Results": [{"User": u, "ErrorCode": code(result[0]), "ErrorMessage": result[1]} for u in users]}
    answers = result.response.results
    for answer in answers:
        if answer.error_code == 0:
            _record(served, answer.user, [d for d in deletions if d.name == answer.user],
                    [u for u in upsertions if u.name == answer.user], at)
    return {"Results": [{"User": a.user, "ErrorCode": a.error_code, "ErrorMessage": a.error_message}
                        for a in answers]}


def _record(served: ServedCluster, user: str, deletions: list[ScramCredentialDeletion],
            upsertions: list[ScramCredentialUpsertion], at: int) -> None:
    """The user's change as the `alter-scram-credentials` step that makes it again (the
    client's salt and salted password, base64)."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    credentials = {mechanism_name(u.mechanism): {"iterations": u.iterations, "salt": b64(u.salt),
                                                 "salted_password": b64(u.salted_password)} for u in upsertions}
    served.record("alter-scram-credentials", {"user": user, "credentials": credentials or None,
                                              "delete": [mechanism_name(d.mechanism) for d in deletions] or None}, at)


def describe_user_scram_credentials(served: ServedCluster, listener: Listener, version: int,
                                    body: Mapping[str, Any]) -> Body:
    image = served.sim.image(listener.node_id)
    users = [u["Name"] for u in body.get("Users") or []]
    results = []
    for user, held in (describe_scram_users(image.scram, users) if image is not None else []):
        if isinstance(held, tuple):
            results.append({"User": user, "ErrorCode": code(held[0]), "ErrorMessage": held[1], "CredentialInfos": []})
        else:
            results.append({"User": user, "ErrorCode": 0, "ErrorMessage": "",
                            "CredentialInfos": [{"Mechanism": m, "Iterations": i} for m, i in held]})
    return {"ErrorCode": 0, "ErrorMessage": "", "Results": results}  # (Kafka leaves its messages' default, "")


HANDLERS: dict[int, Handler] = {ALTER_USER_SCRAM_CREDENTIALS_KEY: alter_user_scram_credentials,
                                DESCRIBE_USER_SCRAM_CREDENTIALS_KEY: describe_user_scram_credentials}
