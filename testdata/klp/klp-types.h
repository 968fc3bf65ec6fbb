/*
 * klp-types.h: Linux 6.1's livepatch structs with their x86_64 layout
 * (include/linux/livepatch.h, kobject.h), without kernel headers, for the
 * fixtures that declare a static struct klp_patch. klpresolve reads only
 * their leading fields and takes the strides from the arrays' symbol
 * sizes. __this_module stands in for the one modpost's .mod.c defines.
 */
struct list_head { struct list_head *next, *prev; };
struct kref { int refcount; };
struct kobject {
	const char *name;
	struct list_head entry;
	struct kobject *parent;
	void *kset;
	const void *ktype;
	void *sd;
	struct kref kref;
	unsigned int state_initialized:1, state_in_sysfs:1, state_add_uevent_sent:1,
		     state_remove_uevent_sent:1, uevent_suppress:1;
};
struct klp_func {
	const char *old_name;
	void *new_func;
	unsigned long old_sympos;
	void *old_func;
	struct kobject kobj;
	struct list_head node, stack_node;
	unsigned long old_size, new_size;
	_Bool nop, patched, transition;
};
struct klp_object;
struct klp_callbacks {
	int (*pre_patch)(struct klp_object *obj);
	void (*post_patch)(struct klp_object *obj);
	void (*pre_unpatch)(struct klp_object *obj);
	void (*post_unpatch)(struct klp_object *obj);
	_Bool post_unpatch_enabled;
};
struct klp_object {
	const char *name;
	struct klp_func *funcs;
	struct klp_callbacks callbacks;
	struct kobject kobj;
	struct list_head func_list, node;
	void *mod;
	_Bool dynamic, patched;
};
struct klp_patch {
	void *mod;
	struct klp_object *objs;
	void *states;
	_Bool replace;
	struct list_head list;
	struct kobject kobj;
	struct list_head obj_list;
	_Bool enabled, forced;
	char free_work[32], finish[32];
};
struct module { char opaque[64]; };
struct module __this_module __attribute__((section(".gnu.linkonce.this_module"))) = { { 0 } };
