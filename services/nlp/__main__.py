from services.nlp.service import binding
from services.runtime import serve

serve(binding)
