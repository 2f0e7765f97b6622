"""The long-running HTTP gateway (G1): the engine kept warm behind the §P HTTP API.

    from clawkeep.gateway import Gateway, serve
    serve(Engine.open(home=...), port=18790)      # what `clawkeep gateway` runs
    app = Gateway(engine).app()                   # the FastAPI app, for embedding or tests
"""

from .app import Gateway
from .server import effective_settings, serve

__all__ = ["Gateway", "effective_settings", "serve"]
