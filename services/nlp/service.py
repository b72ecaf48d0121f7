"""Wires the NLP service into the shared runtime."""

from __future__ import annotations

from docuthinker.nlp.v1 import nlp_service_pb2, nlp_service_pb2_grpc
from services.nlp.servicer import NlpServicer
from services.runtime import MeshSettings, ServiceBinding

FULL_NAME = nlp_service_pb2.DESCRIPTOR.services_by_name["NlpService"].full_name


def binding(settings: MeshSettings) -> ServiceBinding:
    servicer = NlpServicer()
    return ServiceBinding(
        name="nlp",
        full_names=[FULL_NAME],
        register=lambda server: nlp_service_pb2_grpc.add_NlpServiceServicer_to_server(servicer, server),
    )
