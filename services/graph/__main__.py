from services.graph.service import binding
from services.runtime import serve

serve(binding)
