from services.rag.service import binding
from services.runtime import serve

serve(binding)
