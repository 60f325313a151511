/* For cppcheck only: jansson's iteration macros, so it can parse code that uses them. */
#define json_array_foreach(a, i, v) for ((i) = 0; (i) < json_array_size(a) && ((v) = json_array_get((a), (i))); (i)++)
#define json_object_foreach(o, k, v) for ((k) = json_object_iter_key(json_object_iter(o)); (k) && ((v) = json_object_iter_value(json_object_key_to_iter(k))); (k) = json_object_iter_key(json_object_iter_next((o), json_object_key_to_iter(k))))
